from netfl.cli import entry

entry()
