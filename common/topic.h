// A control topic (the scheduler's kCommand messages, the nodes' kReport messages) and the type
// of its body. Every topic's message carries exactly one typed body, a Cereal struct encoded in
// the header's text (common/cereal_body.h); no header field means something else by topic. The
// roles define their topics (common/topics/worker_topics.h, common/topics/server_topics.h); a topic
// and its body cannot be mismatched at a call site.
#pragma once

#include <string>

#include "common/cereal_body.h"
#include "common/message.h"

namespace tteps {

template <class Body>
struct Topic {
  const char* name;
  bool is(const std::string& topic) const { return topic == name; }
  std::string Encode(const Body& body) const { return EncodeCereal(body); }
  // Throws CodecError if `h` does not carry a Body.
  Body Decode(const Header& h) const { return DecodeCereal<Body>(h.text); }
};

// Keeps a parameter out of template deduction (a lambda for std::function<void(const Body&)>:
// Body comes from the topic).
template <class T>
struct NotDeduced {
  using type = T;
};

// The body of a topic that needs none (its name says all).
struct NoBody {
  template <class Archive>
  void serialize(Archive&) {}
};

}  // namespace tteps
