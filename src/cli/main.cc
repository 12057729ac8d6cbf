#include <iostream>

#include "cli/app.h"

int main(int argc, char** argv) { return loom::RunLoom(argc, argv, std::cout, std::cerr); }
