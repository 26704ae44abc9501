"""The torch engine only (torch.func, torch.compile, modules, DDP...)."""
