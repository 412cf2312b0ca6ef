from cwread.cli import entry

entry()
