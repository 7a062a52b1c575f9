from runtime.cli import command

command()
