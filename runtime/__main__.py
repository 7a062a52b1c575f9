from runtime.console import command

command()
