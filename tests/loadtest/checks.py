"""What the load-test harness's own tests share: the repository root (the
first argument, else two levels above this file), a script directory of the
harness to import from, and a list of failed checks that ends the run.

  from checks import Checks
  c = Checks("soak_judge_test", "loadtest/soak")  # puts loadtest/soak on sys.path
  c.check(cond, "what failed")
  c.finish()                                       # prints, exits 1 on any failure
"""

import os
import sys


class Checks:
    def __init__(self, name, script_dir):
        self.name = name
        self.root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "..", "..")
        sys.path.insert(0, os.path.join(self.root, script_dir))
        self.fails = []

    def check(self, cond, what):
        if not cond:
            self.fails.append(what)
            print("FAIL:", what)

    def finish(self, detail=""):
        print(f"{self.name}:", "FAIL" if self.fails else "ok",
              f"({len(self.fails)} failures{', ' + detail if detail else ''})")
        sys.exit(1 if self.fails else 0)
