"""Command-line entry points (``kplane serve``). The one place server and client stacks meet."""
