// The test binary's entry point. Tests that simulate fork a child per simulation (SimGrid
// allows one engine per process), so the binary runs whole or one test at a time alike.
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
