#include "distributed/mpi_search.hpp"

#include <mpi.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace tandem::distributed {

namespace {

enum Tag : int { kTask = 1, kResult = 2, kStop = 3 };

void send_text(const std::string& text, int to, int tag) {
  MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, to, tag, MPI_COMM_WORLD);
}

// Receives the next message from `from` (or any rank) with `tag` (or any tag).
std::string receive_text(int from, int tag, MPI_Status& status) {
  MPI_Probe(from, tag, MPI_COMM_WORLD, &status);
  int count = 0;
  MPI_Get_count(&status, MPI_CHAR, &count);
  std::string text(static_cast<std::size_t>(count), '\0');
  MPI_Recv(text.data(), count, MPI_CHAR, status.MPI_SOURCE, status.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return text;
}

}  // namespace

MpiSession::MpiSession() {
  MPI_Init(nullptr, nullptr);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiSession::~MpiSession() { MPI_Finalize(); }

MpiEvaluator::MpiEvaluator(const MpiSession& session, SimulationEvaluator& local, std::function<void()> on_simulated)
    : session_(session), local_(local), on_simulated_(std::move(on_simulated)) {
  if (session.size() < 2) throw std::invalid_argument("an MPI search needs at least 2 ranks (rank 0 only distributes)");
}

MpiEvaluator::~MpiEvaluator() {
  for (int r = 1; r < session_.size(); ++r) send_text("", r, kStop);
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
    MPI_Status status;
    const nlohmann::json result = nlohmann::json::parse(receive_text(MPI_ANY_SOURCE, kResult, status));
    out.at(result.at("index").get<std::size_t>()) = search::evaluation_from_json(result.at("evaluation"));
    idle.push_back(status.MPI_SOURCE);
    ++done;
    if (on_simulated_) on_simulated_();
  }
  return out;
}

void serve_candidates(SimulationEvaluator& local) {
  while (true) {
    MPI_Status status;
    const std::string text = receive_text(0, MPI_ANY_TAG, status);
    if (status.MPI_TAG == kStop) return;
    const nlohmann::json task = nlohmann::json::parse(text);
    // Simulated in a forked child (SimulationEvaluator with one worker), never in this process.
    const search::Evaluation e = local.evaluate({search::candidate_from_json(task.at("candidate"))}).front();
    send_text(nlohmann::json{{"index", task.at("index")}, {"evaluation", search::to_json(e)}}.dump(), 0, kResult);
  }
}

}  // namespace tandem::distributed
