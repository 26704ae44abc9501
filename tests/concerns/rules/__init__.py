"""User rules: custom_vjp/custom_jvp, host rules, differentiate_with, checkpoint."""
