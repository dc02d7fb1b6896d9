from ctrlaudit.cli import main

main()
