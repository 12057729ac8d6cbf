#include "spec/strategy.h"
#include <gtest/gtest.h>
