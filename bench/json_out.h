// A small streaming JSON writer (objects, arrays, strings, numbers), enough for the report.
#pragma once
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace cake_bench {

class JsonOut {
 public:
  explicit JsonOut(std::string *out) : out_(out) {}

  JsonOut &obj() { return open('{'); }
  JsonOut &arr() { return open('['); }
  JsonOut &end() {
    const char c = stack_.back() == '{' ? '}' : ']';
    stack_.pop_back();
    first_.pop_back();
    newline();
    *out_ += c;
    return *this;
  }
  JsonOut &key(const std::string &k) {
    comma();
    quote(k);
    *out_ += ": ";
    pending_key_ = true;
    return *this;
  }
  JsonOut &str(const std::string &v) {
    value_prefix();
    quote(v);
    return *this;
  }
  JsonOut &num(double v) {
    value_prefix();
    if (!std::isfinite(v)) {
      *out_ += "null";
    } else {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.6g", v);
      *out_ += buf;
    }
    return *this;
  }
  JsonOut &integer(long long v) {
    value_prefix();
    *out_ += std::to_string(v);
    return *this;
  }
  JsonOut &boolean(bool v) {
    value_prefix();
    *out_ += v ? "true" : "false";
    return *this;
  }
  JsonOut &null() {
    value_prefix();
    *out_ += "null";
    return *this;
  }
  // Shorthands for "key": value.
  JsonOut &kv(const std::string &k, const std::string &v) { return key(k).str(v); }
  JsonOut &kv(const std::string &k, const char *v) { return key(k).str(v); }
  JsonOut &kn(const std::string &k, double v) { return key(k).num(v); }
  JsonOut &ki(const std::string &k, long long v) { return key(k).integer(v); }
  JsonOut &kb(const std::string &k, bool v) { return key(k).boolean(v); }

 private:
  JsonOut &open(char c) {
    value_prefix();
    *out_ += c;
    stack_.push_back(c);
    first_.push_back(true);
    return *this;
  }
  void value_prefix() {
    if (pending_key_) {
      pending_key_ = false;
      return;
    }
    comma();
  }
  void comma() {
    if (first_.empty()) return;
    if (!first_.back()) *out_ += ',';
    first_.back() = false;
    newline();
  }
  void newline() {
    *out_ += '\n';
    out_->append(2 * stack_.size(), ' ');
  }
  void quote(const std::string &s) {
    *out_ += '"';
    for (unsigned char c : s) {
      if (c == '"' || c == '\\') {
        *out_ += '\\';
        *out_ += char(c);
      } else if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        *out_ += buf;
      } else {
        *out_ += char(c);
      }
    }
    *out_ += '"';
  }

  std::string *out_;
  std::vector<char> stack_;
  std::vector<bool> first_;
  bool pending_key_ = false;
};

}  // namespace cake_bench
