#include "spec/model.h"
