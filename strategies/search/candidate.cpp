#include "strategies/search/candidate.hpp"

namespace tandem::search {

const char* to_string(HybridConfig::Partition partition) {
  return partition == HybridConfig::Partition::proportional ? "proportional" : "uniform";
}

const char* to_string(BatchSplit split) { return split == BatchSplit::proportional ? "proportional" : "even"; }

bool Candidate::heterogeneity_aware() const {
  return (pp > 1 && partition == HybridConfig::Partition::proportional) ||
         (dp > 1 && batch_split == BatchSplit::proportional);
}

std::string Candidate::key() const {
  std::string k = "tp=" + std::to_string(tp) + " pp=" + std::to_string(pp) + " dp=" + std::to_string(dp) +
                  " mbs=" + std::to_string(micro_batch_size) + " " + tandem::to_string(schedule);
  if (virtual_stages > 1) k += " v=" + std::to_string(virtual_stages);
  k += " zero=" + std::to_string(zero_stage) + " rc=" + tandem::to_string(recompute);
  if (sequence_parallel) k += " sp";
  k += std::string(" order=") + tandem::to_string(order) + " stages=" + to_string(partition) +
       " batch=" + to_string(batch_split);
  return k;
}

}  // namespace tandem::search
