"""Engine-only behaviour, one package per engine."""
