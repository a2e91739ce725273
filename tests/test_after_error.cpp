// placeholder, filled below
#include <gtest/gtest.h>
TEST(AfterError, Placeholder) {}
