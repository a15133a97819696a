from toolscout.cli import main

main()
