"""``memoryctl``, the product's command line: the admin API over HTTP, operator
commands as the owner role, and export/import of a namespace as Markdown files.

Installed with the project (``[project.scripts]``); never shipped in the Lambda
layer, which does not import it.
"""
