"""Code nobody here wrote (scipy, scikit-learn) run on traced arrays."""
