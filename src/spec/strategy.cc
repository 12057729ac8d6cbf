#include "spec/strategy.h"
