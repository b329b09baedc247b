#include "distributed/mpi_search.hpp"

#include <stdexcept>
#include <string>
#include <vector>

#include "distributed/mpi_module.hpp"

namespace tandem::distributed {

namespace {

enum Tag : int { kAny = -1, kTask = 1, kResult = 2, kStop = 3 };

void send_text(const std::string& text, int to, int tag) {
  check_mpi(mpi_module().send(text.data(), static_cast<int>(text.size()), to, tag), "MPI_Send");
}

// Receives the next message from `from` (or any rank, -1) with `tag` (or any tag, -1); says who
// sent it and its tag.
std::string receive_text(int from, int tag, int& source, int& message_tag) {
  int count = 0;
  check_mpi(mpi_module().probe(from, tag, &source, &message_tag, &count), "MPI_Probe");
  std::string text(static_cast<std::size_t>(count), '\0');
  check_mpi(mpi_module().receive(text.data(), count, source, message_tag), "MPI_Recv");
  return text;
}

}  // namespace

MpiSession::MpiSession() { check_mpi(mpi_module().init(&rank_, &size_), "MPI_Init"); }

MpiSession::~MpiSession() { mpi_module().finalize(); }

MpiEvaluator::MpiEvaluator(const MpiSession& session, SimulationEvaluator& local, std::function<void()> on_simulated)
    : session_(session), local_(local), on_simulated_(std::move(on_simulated)) {
  if (session.size() < 2) throw std::invalid_argument("an MPI search needs at least 2 ranks (rank 0 only distributes)");
}

MpiEvaluator::~MpiEvaluator() {
  // Not checked: a destructor must not throw, and MPI's default handler aborts on errors anyway.
  for (int r = 1; r < session_.size(); ++r) mpi_module().send("", 0, r, kStop);
}

std::vector<search::Estimate> MpiEvaluator::estimate(const std::vector<search::Candidate>& candidates) {
  return local_.estimate(candidates);
}

std::vector<search::Evaluation> MpiEvaluator::evaluate(const std::vector<search::Candidate>& candidates) {
  std::vector<search::Evaluation> out(candidates.size());
  std::vector<int> idle;
  for (int r = session_.size() - 1; r >= 1; --r) idle.push_back(r);
  std::size_t next = 0, done = 0;
  while (done < candidates.size()) {
    while (next < candidates.size() && !idle.empty()) {
      const nlohmann::json task = {{"index", next}, {"candidate", search::to_json(candidates[next])}};
      send_text(task.dump(), idle.back(), kTask);
      idle.pop_back();
      ++next;
    }
    int source = 0, tag = 0;
    const nlohmann::json result = nlohmann::json::parse(receive_text(kAny, kResult, source, tag));
    out.at(result.at("index").get<std::size_t>()) = search::evaluation_from_json(result.at("evaluation"));
    idle.push_back(source);
    ++done;
    if (on_simulated_) on_simulated_();
  }
  return out;
}

void serve_candidates(SimulationEvaluator& local) {
  while (true) {
    int source = 0, tag = 0;
    const std::string text = receive_text(0, kAny, source, tag);
    if (tag == kStop) return;
    const nlohmann::json task = nlohmann::json::parse(text);
    // Simulated in a forked child (SimulationEvaluator with one worker), never in this process.
    const search::Evaluation e = local.evaluate({search::candidate_from_json(task.at("candidate"))}).front();
    send_text(nlohmann::json{{"index", task.at("index")}, {"evaluation", search::to_json(e)}}.dump(), 0, kResult);
  }
}

}  // namespace tandem::distributed
