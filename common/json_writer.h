// A small JSON object builder for the output files (metrics.jsonl, summary.json) and stdout.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tteps {

// Builds one JSON object, keys in insertion order. Non-finite numbers are written as null.
class JsonObject {
 public:
  JsonObject& Add(const std::string& key, double value);
  JsonObject& Add(const std::string& key, int64_t value);
  JsonObject& Add(const std::string& key, int value) { return Add(key, int64_t{value}); }
  JsonObject& Add(const std::string& key, uint64_t value);
  JsonObject& Add(const std::string& key, bool value);
  JsonObject& Add(const std::string& key, const std::string& value);
  JsonObject& Add(const std::string& key, const char* value) {
    return Add(key, std::string(value));
  }
  JsonObject& Add(const std::string& key, const JsonObject& value);
  JsonObject& Add(const std::string& key, const std::vector<double>& values);
  JsonObject& Add(const std::string& key, const std::vector<int64_t>& values);
  JsonObject& Add(const std::string& key, const std::vector<std::string>& values);
  // `json` must already be valid JSON text.
  JsonObject& AddRaw(const std::string& key, const std::string& json);
  // The members of `object_json`, the text of a valid JSON object, after those added so far.
  JsonObject& AddMembers(const std::string& object_json);

  bool empty() const { return body_.empty(); }
  std::string str() const { return "{" + body_ + "}"; }

 private:
  void Key(const std::string& key);
  std::string body_;
};

std::string JsonQuote(const std::string& s);
std::string JsonNumber(double v);

}  // namespace tteps
