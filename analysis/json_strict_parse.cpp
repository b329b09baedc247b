#include "analysis/json_strict_parse.hpp"

#include <algorithm>
#include <stdexcept>
#include <unordered_set>
#include <vector>

#include "analysis/json_locate.hpp"

namespace tandem {
namespace {

// Thrown from the parser's callback to stop at a key given twice (the tracker knows which).
struct DuplicateKey {};

// Follows the parser's events to know, at any moment, the path of the value it is in: one frame
// per open object or list. Frames are kept when closed, so their key sets' allocations are
// reused by the next object at that depth (a trace has millions of small objects).
class PathTracker {
 public:
  bool on_event(nlohmann::json::parse_event_t event, const nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    switch (event) {
      case Event::object_start: open(false); break;
      case Event::array_start: open(true); break;
      case Event::key: {
        Frame& f = frames_[depth_ - 1];
        f.key = parsed.get<std::string>();
        f.has_key = true;
        if (!f.keys.insert(f.key).second) throw DuplicateKey{};
        break;
      }
      case Event::object_end:
      case Event::array_end:
        --depth_;
        value_done();
        break;
      case Event::value: value_done(); break;
    }
    return true;  // keep every value
  }

  // "records[3].rank": where the parser stands (a key's value, a list's next element).
  std::string path() const {
    std::string out;
    for (std::size_t i = 0; i < depth_; ++i) {
      const Frame& f = frames_[i];
      if (f.is_list) {
        out += "[" + std::to_string(f.index) + "]";
      } else if (f.has_key) {
        out += (out.empty() ? "" : ".") + f.key;
      } else {
        break;  // an object before its first key: the path ends at the object
      }
    }
    return out;
  }

 private:
  struct Frame {
    bool is_list = false;
    std::unordered_set<std::string> keys;
    std::string key;
    bool has_key = false;
    std::size_t index = 0;
  };
  void open(bool is_list) {
    if (depth_ == frames_.size()) frames_.emplace_back();
    Frame& f = frames_[depth_++];
    f.is_list = is_list;
    f.keys.clear();
    f.has_key = false;
    f.index = 0;
  }
  void value_done() {
    if (depth_ > 0 && frames_[depth_ - 1].is_list) ++frames_[depth_ - 1].index;
  }
  std::vector<Frame> frames_;
  std::size_t depth_ = 0;
};

int line_at(const std::string& text, std::size_t byte) {
  const auto end = text.begin() + static_cast<std::ptrdiff_t>(std::min(byte, text.size()));
  return 1 + static_cast<int>(std::count(text.begin(), end, '\n'));
}

JsonRefusal at_field(const std::string& text, const std::string& field, int repeat, const std::string& message) {
  const JsonPosition p = json_position_of(text, field, repeat);
  return JsonRefusal{p.byte, p.line, field, message};
}

}  // namespace

nlohmann::json parse_json_strictly(const std::string& text, const std::function<void(const JsonRefusal&)>& refuse) {
  PathTracker tracker;
  JsonRefusal refusal;
  try {
    return nlohmann::json::parse(
        text, [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) { return tracker.on_event(event, parsed); });
  } catch (const DuplicateKey&) {
    const std::string field = tracker.path();
    refusal = at_field(text, field, 1, "given twice in one object; give each field once");
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann's byte is 1-based (the character it stopped at); 0 when it has none.
    const std::size_t byte = e.byte > 0 ? static_cast<std::size_t>(e.byte - 1) : 0;
    refusal = JsonRefusal{byte, line_at(text, byte), tracker.path(), "JSON syntax error"};
  } catch (const nlohmann::json::exception&) {
    // out_of_range 406, a number beyond a double ("1e400"): raised before its value's event, so
    // the tracker stands at that value.
    refusal = at_field(text, tracker.path(), 0, "a number beyond the range of a double");
  }
  refuse(refusal);
  throw std::logic_error("parse_json_strictly: the refusal handler returned");
}

}  // namespace tandem
