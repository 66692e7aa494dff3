"""The bodies of the ``ndcg-eval`` commands, one module each; ``cli`` parses and dispatches.

Each module's ``run(args)`` takes the parsed arguments and returns the exit status. An option
is checked before the first file is written; errors a user can cause are
``schemas.errors.EvaluationError`` and become a message and exit status 2 in ``cli.main``.
"""
