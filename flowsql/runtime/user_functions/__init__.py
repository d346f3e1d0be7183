"""Running user-defined functions: calling the user's code by its import path, checking
what it returns, and turning its failures into errors that name the function and the
input row (never a traceback from inside the engine). ``scalar`` serves the expression
evaluator, ``aggregate`` the aggregate operators."""
