from dtsim.cli import main

main()
