#include "spec/cluster.h"
#include <gtest/gtest.h>
