"""Data access: the only code that holds a database connection or names a statement.

One typed function per statement (arguments in, typed rows or a typed outcome out),
statements as files under ``sql/``, request transactions on a pooled connection
(:mod:`.pool`), the migrations and the provisioning of a database. Nothing here calls
back into its callers: an operation orders its steps, each a call into this package.
"""
