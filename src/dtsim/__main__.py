from dtsim.interfaces.cli.main import main

main()
