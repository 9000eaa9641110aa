// Unit tests of the command-line parser (args.h): values of every kind, and
// the arguments it refuses.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "runtime/args.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>

namespace {

// Parses `args` (without argv[0]) against one parameter of `kind`.
bool ParseOne(int32_t kind, const char* arg, uint64_t* slot) {
  const char* argv[] = {"prog", arg, nullptr};
  const char* names[] = {"x"};
  int32_t kinds[] = {kind};
  return delta_parse_args(2, argv, 1, names, kinds, slot) == 0;
}

template <typename T>
T SlotAs(uint64_t slot) {
  T value;
  std::memcpy(&value, &slot, sizeof value);
  return value;
}

}  // namespace

TEST_CASE("every kind parses into its slot") {
  uint64_t slot = 0;
  CHECK(ParseOne(DELTA_ELEM_I32, "-7", &slot));
  CHECK(SlotAs<int32_t>(slot) == -7);
  CHECK(ParseOne(DELTA_ELEM_I64, "-9000000000", &slot));
  CHECK(SlotAs<int64_t>(slot) == -9000000000);
  CHECK(ParseOne(DELTA_ELEM_F32, "0.1", &slot));
  CHECK(SlotAs<float>(slot) == 0.1f);
  CHECK(ParseOne(DELTA_ELEM_F64, "1e-3", &slot));
  CHECK(SlotAs<double>(slot) == 1e-3);
  CHECK(ParseOne(DELTA_ELEM_BOOL, "true", &slot));
  CHECK(SlotAs<unsigned char>(slot) == 1);
  CHECK(ParseOne(DELTA_ELEM_BOOL, "false", &slot));
  CHECK(SlotAs<unsigned char>(slot) == 0);
  const char* path = "data.npy";
  const char* argv[] = {"prog", path, nullptr};
  const char* names[] = {"data"};
  int32_t kinds[] = {DELTA_ARG_PATH};
  REQUIRE(delta_parse_args(2, argv, 1, names, kinds, &slot) == 0);
  CHECK(SlotAs<const char*>(slot) == path);
  CHECK(std::strcmp(delta_path_arg(0), "data.npy") == 0);
}

TEST_CASE("values that do not parse are refused") {
  uint64_t slot = 0;
  CHECK_FALSE(ParseOne(DELTA_ELEM_I32, "2147483648", &slot));
  CHECK_FALSE(ParseOne(DELTA_ELEM_I64, "99999999999999999999", &slot));
  CHECK_FALSE(ParseOne(DELTA_ELEM_I64, "1.5", &slot));
  CHECK_FALSE(ParseOne(DELTA_ELEM_I64, " 1", &slot));
  CHECK_FALSE(ParseOne(DELTA_ELEM_I64, "", &slot));
  CHECK_FALSE(ParseOne(DELTA_ELEM_F32, "fast", &slot));
  CHECK_FALSE(ParseOne(DELTA_ELEM_F32, "0.1x", &slot));
  CHECK_FALSE(ParseOne(DELTA_ELEM_BOOL, "1", &slot));
  CHECK_FALSE(ParseOne(DELTA_ARG_PATH, "", &slot));
}

TEST_CASE("a wrong count is refused, extra arguments included") {
  const char* names[] = {"x"};
  int32_t kinds[] = {DELTA_ELEM_I64};
  uint64_t slot = 0;
  const char* none[] = {"prog", nullptr};
  CHECK(delta_parse_args(1, none, 1, names, kinds, &slot) == 1);
  const char* extra[] = {"prog", "1", "2", nullptr};
  CHECK(delta_parse_args(3, extra, 1, names, kinds, &slot) == 1);
  CHECK(delta_parse_args(2, extra, 0, nullptr, nullptr, nullptr) == 1);
  CHECK(delta_parse_args(1, extra, 0, nullptr, nullptr, nullptr) == 0);
}
