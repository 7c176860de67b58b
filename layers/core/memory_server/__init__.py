"""Memory server core: domain, data access and operations shared by every function."""
