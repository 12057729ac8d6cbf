#include "spec/cluster.h"
