"""Cross-engine concerns, each test parametrised over the engines it holds for."""
