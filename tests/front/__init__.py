"""The front end's own behaviour (``adswitch/``), module by module; engines are the tape or
stand-ins."""
