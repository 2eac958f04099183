"""Expressions as C++: ExprGen (generator.py) and its handlers by family of functions."""
