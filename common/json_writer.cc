#include "common/json_writer.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace tteps {

std::string JsonQuote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string JsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  auto res = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip form
  return std::string(buf, res.ptr);
}

void JsonObject::Key(const std::string& key) {
  if (!body_.empty()) body_ += ',';
  body_ += JsonQuote(key);
  body_ += ':';
}

JsonObject& JsonObject::Add(const std::string& key, double value) {
  Key(key);
  body_ += JsonNumber(value);
  return *this;
}
JsonObject& JsonObject::Add(const std::string& key, int64_t value) {
  Key(key);
  body_ += std::to_string(value);
  return *this;
}
JsonObject& JsonObject::Add(const std::string& key, uint64_t value) {
  Key(key);
  body_ += std::to_string(value);
  return *this;
}
JsonObject& JsonObject::Add(const std::string& key, bool value) {
  Key(key);
  body_ += value ? "true" : "false";
  return *this;
}
JsonObject& JsonObject::Add(const std::string& key, const std::string& value) {
  Key(key);
  body_ += JsonQuote(value);
  return *this;
}
JsonObject& JsonObject::Add(const std::string& key, const JsonObject& value) {
  return AddRaw(key, value.str());
}
JsonObject& JsonObject::Add(const std::string& key, const std::vector<double>& values) {
  std::string arr = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) arr += ',';
    arr += JsonNumber(values[i]);
  }
  return AddRaw(key, arr + "]");
}
JsonObject& JsonObject::Add(const std::string& key, const std::vector<int64_t>& values) {
  std::string arr = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) arr += ',';
    arr += std::to_string(values[i]);
  }
  return AddRaw(key, arr + "]");
}
JsonObject& JsonObject::Add(const std::string& key, const std::vector<std::string>& values) {
  std::string arr = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) arr += ',';
    arr += JsonQuote(values[i]);
  }
  return AddRaw(key, arr + "]");
}
JsonObject& JsonObject::AddRaw(const std::string& key, const std::string& json) {
  Key(key);
  body_ += json;
  return *this;
}

JsonObject& JsonObject::AddMembers(const std::string& object_json) {
  // Between the braces; "{}" has no members to add.
  const std::string members =
      object_json.size() > 2 ? object_json.substr(1, object_json.size() - 2) : "";
  if (members.empty()) return *this;
  if (!body_.empty()) body_ += ',';
  body_ += members;
  return *this;
}

}  // namespace tteps
