#include "cli/input_summary.hpp"

#include <cstdio>

#include "common/units.hpp"

namespace tandem::cli {

namespace {

// Three significant digits: a summary, not a record (the file holds the exact figures).
std::string figure(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

std::string link(const LinkSpec& l) {
  return figure(l.bandwidth_bytes_per_s / kGB) + " GB/s, " + figure(l.latency_s * 1e6) + " us";
}

std::string group_text(const NodeGroup& g, bool multi_node) {
  std::string text = std::to_string(g.node_count) + " x " + std::to_string(g.devices_per_node) + " " + g.device.name;
  if (g.devices_per_node > 1) text += ", " + std::string(to_string(g.fabric)) + " " + link(g.intra_link);
  if (multi_node && g.nic.bandwidth_bytes_per_s > 0) {
    text += ", " + std::to_string(g.nic_count()) + " NIC" + (g.nic_count() > 1 ? "s" : "") + "/node " +
            link(g.nic);
    if (g.devices_per_nic() > 1) text += " (each shared by " + std::to_string(g.devices_per_nic()) + " devices)";
  }
  return text;
}

// "'name': model ..., N of the M devices of cluster 'c', strategy ..., global batch B x S tokens".
std::string scenario_text(const Scenario& s) {
  const auto strategy = make_strategy(s);
  return "'" + s.name + "': model " + s.model.name() + ", " + std::to_string(strategy->world_size()) + " of the " +
         std::to_string(s.cluster.device_count()) + " devices of cluster '" + s.cluster.name + "', strategy " +
         strategy->name() + ", global batch " + std::to_string(s.training.global_batch_size) + " x " +
         std::to_string(s.training.seq_length) + " tokens";
}

}  // namespace

std::string describe(const DeviceProfile& d) {
  std::string text = "device '" + d.name + "' (" + d.kind + "): " + figure(d.peak_bf16_flops_per_s / kTera) +
                     " TFLOP/s bf16, " + figure(d.peak_fp32_flops_per_s / kTera) + " TFLOP/s fp32, " +
                     figure(d.memory_capacity_bytes / kGB) + " GB at " +
                     figure(d.memory_bandwidth_bytes_per_s / kGB) + " GB/s, " + figure(d.busy_power_w) + " W busy";
  text += d.price_per_hour_usd > 0 ? ", $" + figure(d.price_per_hour_usd) + "/h" : ", no price";
  return text;
}

std::string describe(const Cluster& c) {
  const bool multi_node = c.node_count() > 1;
  std::string text = "cluster '" + c.name + "': " + std::to_string(c.device_count()) +
                     (c.device_count() > 1 ? " devices on " : " device on ") +
                     std::to_string(c.node_count()) + " node" + (multi_node ? "s" : "") + " (";
  for (std::size_t g = 0; g < c.groups.size(); ++g) text += (g ? "; " : "") + group_text(c.groups[g], multi_node);
  text += ")";
  if (multi_node) {
    text += ", " + std::string(to_string(c.network.topology));
    if (c.has_spine())
      text += " of " + std::to_string(c.leaf_count()) + " leaves, oversubscription " + figure(c.network.oversubscription);
  }
  return text;
}

std::string describe(const Scenario& s) { return "scenario " + scenario_text(s); }

std::string describe(const SearchScenario& search) {
  return "search over " + scenario_text(search.base) + "; objective " + to_string(search.settings.objective);
}

}  // namespace tandem::cli
