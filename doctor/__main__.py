from rldoctor.cli import main

main()
