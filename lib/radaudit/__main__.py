from radaudit.cli import main

main()
