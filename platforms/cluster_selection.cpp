#include "platforms/cluster_selection.hpp"

#include <yaml-cpp/yaml.h>

#include <stdexcept>

namespace tandem {

namespace {
void check(const Cluster& cluster, const std::vector<int>& nodes) {
  if (nodes.size() != cluster.groups.size())
    throw std::invalid_argument("a node selection needs one count per node group of cluster '" + cluster.name + "'");
  int total = 0;
  for (std::size_t g = 0; g < nodes.size(); ++g) {
    if (nodes[g] < 0 || nodes[g] > cluster.groups[g].node_count)
      throw std::invalid_argument("group '" + cluster.groups[g].name + "' has " +
                                  std::to_string(cluster.groups[g].node_count) + " nodes, not " + std::to_string(nodes[g]));
    total += nodes[g];
  }
  if (total == 0) throw std::invalid_argument("a node selection needs at least one node");
}
}  // namespace

Cluster select_nodes(const Cluster& cluster, const std::vector<int>& nodes) {
  check(cluster, nodes);
  Cluster out = cluster;
  out.groups.clear();
  for (std::size_t g = 0; g < nodes.size(); ++g) {
    if (nodes[g] == 0) continue;
    out.groups.push_back(cluster.groups[g]);
    out.groups.back().node_count = nodes[g];
  }
  out.description = cluster.description + " (using " + selection_text(cluster, nodes) + " nodes)";
  return out;
}

int selected_devices(const Cluster& cluster, const std::vector<int>& nodes) {
  int devices = 0;
  for (std::size_t g = 0; g < nodes.size() && g < cluster.groups.size(); ++g)
    devices += nodes[g] * cluster.groups[g].devices_per_node;
  return devices;
}

std::string selection_text(const Cluster& cluster, const std::vector<int>& nodes) {
  std::string text;
  for (std::size_t g = 0; g < nodes.size() && g < cluster.groups.size(); ++g)
    if (nodes[g] > 0) text += (text.empty() ? "" : " + ") + std::to_string(nodes[g]) + " " + cluster.groups[g].name;
  return text;
}

std::string selected_cluster_yaml(const Cluster& cluster, const std::vector<int>& nodes) {
  check(cluster, nodes);
  YAML::Node root;
  try {
    root = YAML::LoadFile(cluster.file);
  } catch (const YAML::Exception& e) {
    throw std::runtime_error("cannot read cluster file " + cluster.file + ": " + e.what());
  }
  YAML::Node kept(YAML::NodeType::Sequence);
  const YAML::Node groups = root["node_groups"];
  for (std::size_t g = 0; g < nodes.size(); ++g) {
    if (nodes[g] == 0) continue;
    YAML::Node group = YAML::Clone(groups[g]);
    group["nodes"] = nodes[g];
    kept.push_back(group);
  }
  root["node_groups"] = kept;
  root["name"] = cluster.name + "-selected";
  root["description"] = cluster.description + " (using " + selection_text(cluster, nodes) + " nodes)";
  return "# Written by tandem search: cluster " + cluster.name + " (" + cluster.file + ") with " +
         selection_text(cluster, nodes) + " nodes.\n" + YAML::Dump(root) + "\n";
}

}  // namespace tandem
