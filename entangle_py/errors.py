"""Errors a user can act on.  The CLI prints them as one line and exits 2 (bad input)."""


class InputError(Exception):
    """Bad input: an unreadable or unsafe file, a spec naming an unknown tensor, a graph break..."""
