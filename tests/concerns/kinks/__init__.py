"""Derivatives at kinks and infinite slopes: the convention, on every engine."""
