"""The pull-based loop that drives one operator of a bounded run, shared by the
single-process executor and a parallel stage's subtask.

Each node becomes a generator of its output batches. The generator opens the operator,
then either drains a :class:`Source` (``produce``) or feeds the operator its inputs one
after the other in its ``input_order`` (a hash join reads its build side to the end before
the probe side), calling ``process_batch`` per batch and ``end_input`` after each input;
it closes the operator last -- also when the consumer stops early (LIMIT) or an error
unwinds the pipeline. A :class:`Limiting` operator that is satisfied stops pulling its
current input. A :class:`Merging` operator (a merge join) gets its inputs interleaved, each
batch from the input it names, and each input's ``end_input`` as soon as that input ends.

Every hook runs through the caller's ``guard``, which decides what an unexpected exception
becomes (the executor and a subtask name the operator differently); ``inputs`` builds the
generator of an input node, so the caller decides how leaves are read.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Iterator
from typing import Any, Protocol, TypeVar

import pyarrow as pa

from flowsql.planner.physical import PhysicalPlan
from flowsql.runtime.operator import Operator, OperatorContext
from flowsql.runtime.operators.contract import Limiting, Merging, Source

_T = TypeVar("_T")

Batches = Generator[pa.RecordBatch, None, None]


class Guard(Protocol):
    """Runs one operator hook ``fn(*args)`` on behalf of the operator named ``label``."""

    def __call__(self, label: str, fn: Callable[..., _T], *args: Any) -> _T: ...


def pull(node: PhysicalPlan, operator: Operator, context: OperatorContext, guard: Guard,
         inputs: Callable[[PhysicalPlan], Batches]) -> Batches:
    """The batches ``operator`` (running ``node``, labelled ``context.name``) emits."""
    label = context.name
    guard(label, operator.open, context)
    try:
        if isinstance(operator, Source):
            produced = operator.produce()
            while (batch := guard(label, next, produced, None)) is not None:
                if batch.num_rows:
                    yield batch
            return
        if isinstance(operator, Merging):
            yield from _merge(operator, [inputs(child) for child in node.inputs], label, guard)
            return
        order = operator.input_order or tuple(range(len(node.inputs)))
        for index in order:
            yield from _feed(operator, index, inputs(node.inputs[index]), label, guard)
    finally:
        guard(label, operator.close)


def _feed(operator: Operator, index: int, child: Batches, label: str,
          guard: Guard) -> Iterator[pa.RecordBatch]:
    """Push one input through the operator, then signal its end."""
    try:
        for batch in child:
            yield from _emitted(guard, label, operator.process_batch, index, batch)
            if isinstance(operator, Limiting) and operator.satisfied:
                break
    finally:
        child.close()
    yield from _emitted(guard, label, operator.end_input, index)


def _merge(operator: Merging, children: list[Batches], label: str,
           guard: Guard) -> Iterator[pa.RecordBatch]:
    """Feed the inputs interleaved, one batch at a time from the input the operator names;
    an input's ``end_input`` follows its last batch at once."""
    running = set(range(len(children)))
    try:
        while running:
            index = guard(label, operator.next_input)
            if index not in running:
                index = min(running)
            batch = next(children[index], None)
            if batch is None:
                running.discard(index)
                children[index].close()
                yield from _emitted(guard, label, operator.end_input, index)
            elif batch.num_rows:
                yield from _emitted(guard, label, operator.process_batch, index, batch)
    finally:
        for child in children:
            child.close()


def _emitted(guard: Guard, label: str, fn: Callable[..., Iterable[pa.RecordBatch]],
             *args: Any) -> Iterator[pa.RecordBatch]:
    """Call a hook and pass on what it emits, one batch at a time. A hook may be a
    generator (each step runs through ``guard``): an operator that emits more than
    memory holds at end of input (an external sort's merge) is drawn as it is consumed,
    never materialized."""
    emitted = iter(guard(label, fn, *args))
    while (batch := guard(label, next, emitted, None)) is not None:
        if batch.num_rows:
            yield batch
