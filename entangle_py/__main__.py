from entangle_py.cli import main

raise SystemExit(main())
