// The error thrown for bad input data: unreadable files, invalid records, bad statistics files.
#pragma once

#include <stdexcept>

namespace tteps::data {

class DataError : public std::runtime_error {
 public:
  using runtime_error::runtime_error;
};

}  // namespace tteps::data
