"""The Array API namespaces: array methods, numpy names."""
