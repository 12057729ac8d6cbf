#include "spec/model.h"
#include <gtest/gtest.h>
