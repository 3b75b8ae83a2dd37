from gcbench.cli import main

main()
