#include <iostream>
#include <string>
#include <vector>

#include "sim/cli/cli.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return ess::run_cli(args, std::cout, std::cerr);
}
