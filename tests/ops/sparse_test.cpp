#include "ops_test_support.h"
