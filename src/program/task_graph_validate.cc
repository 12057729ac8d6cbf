// TaskGraph::Validate(): cycle detection with Boost.Graph, in its own file so that the builder in
// task_graph.cc stays free of Boost headers.

#include <algorithm>
#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <boost/graph/depth_first_search.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "program/task_graph.h"

namespace loom {
namespace {

// An edge of the wait-for graph, with the tasks it came from (a collective's members share one
// vertex, so the vertex alone does not say which member).
struct WaitEdge {
  TaskId before = 0;
  TaskId after = 0;
  bool stream_order = false;  // else an explicit dependency
};

// Compressed sparse rows: built in one pass from the edge list, a few allocations in all.
using WaitGraph =
    boost::compressed_sparse_row_graph<boost::directedS, boost::no_property, WaitEdge>;
using Vertex = WaitGraph::vertex_descriptor;

// Records the tree edge that discovered each vertex and the first back edge (which closes a
// cycle); depth_first_search() keeps going after it, which costs less than unwinding early.
class CycleRecorder : public boost::default_dfs_visitor {
 public:
  CycleRecorder(std::vector<std::optional<WaitEdge>>* discovered_by, std::vector<Vertex>* parent,
                std::optional<WaitEdge>* back_edge)
      : discovered_by_(discovered_by), parent_(parent), back_edge_(back_edge) {}

  void tree_edge(WaitGraph::edge_descriptor e, const WaitGraph& g) const {
    (*discovered_by_)[boost::target(e, g)] = g[e];
    (*parent_)[boost::target(e, g)] = boost::source(e, g);
  }
  void back_edge(WaitGraph::edge_descriptor e, const WaitGraph& g) const {
    if (!*back_edge_) *back_edge_ = g[e];
  }

 private:
  std::vector<std::optional<WaitEdge>>* discovered_by_;
  std::vector<Vertex>* parent_;
  std::optional<WaitEdge>* back_edge_;
};

// One vertex per task, except that a collective's members all map to its first member: they
// start together, so an edge into any of them is an edge into all.
WaitGraph BuildWaitGraph(const TaskGraph& graph, std::vector<Vertex>* vertex_of) {
  const int32_t n = graph.num_tasks();
  vertex_of->resize(n);
  for (TaskId t = 0; t < n; ++t) {
    const GroupId g = graph.group_of(t);
    (*vertex_of)[t] = g == kNoGroup ? t : graph.group_members(g)[0];
  }
  std::vector<std::pair<Vertex, Vertex>> ends;
  std::vector<WaitEdge> edges;
  ends.reserve(graph.dependencies().size() + n);
  edges.reserve(graph.dependencies().size() + n);
  auto add = [&](TaskId before, TaskId after, bool stream_order) {
    ends.emplace_back((*vertex_of)[before], (*vertex_of)[after]);
    edges.push_back({before, after, stream_order});
  };
  for (const Dependency& d : graph.dependencies()) add(d.before, d.after, false);
  std::vector<TaskId> last_on_stream(graph.num_streams(), -1);
  for (TaskId t = 0; t < n; ++t) {
    TaskId& last = last_on_stream[graph.task(t).stream];
    if (last >= 0) add(last, t, true);
    last = t;
  }
  return WaitGraph(boost::edges_are_unsorted_multi_pass, ends.begin(), ends.end(), edges.begin(),
                   static_cast<Vertex>(n));
}

// Spells out |cycle| (edges in order, each ending where the next begins, up to collectives).
std::string DescribeCycle(const TaskGraph& graph, const std::vector<WaitEdge>& cycle) {
  constexpr size_t kMaxEdgesShown = 12;
  std::string text = "task graph has a cycle, so the step can never finish: " +
                     graph.DescribeTask(cycle.front().before);
  const size_t shown = std::min(cycle.size(), kMaxEdgesShown);
  for (size_t i = 0; i < shown; ++i) {
    const WaitEdge& e = cycle[i];
    if (i > 0 && e.before != cycle[i - 1].after) {
      text += " =[same collective]= " + graph.DescribeTask(e.before);
    }
    text += e.stream_order ? " -[stream order]-> " : " -[dependency]-> ";
    text += graph.DescribeTask(e.after);
  }
  if (shown < cycle.size()) {
    text += " ... (" + std::to_string(cycle.size() - shown) + " more edges)";
  } else if (cycle.back().after != cycle.front().before) {
    text += " =[same collective]= " + graph.DescribeTask(cycle.front().before);
  }
  return text + "; reorder the streams or remove a dependency";
}

}  // namespace

Status TaskGraph::Validate() const {
  if (!build_status_.ok()) return build_status_;
  std::vector<Vertex> vertex_of;
  const WaitGraph wait_graph = BuildWaitGraph(*this, &vertex_of);

  const size_t n = boost::num_vertices(wait_graph);
  std::vector<std::optional<WaitEdge>> discovered_by(n);
  std::vector<Vertex> parent(n);
  std::optional<WaitEdge> back_edge;
  boost::depth_first_search(wait_graph,
                            boost::visitor(CycleRecorder(&discovered_by, &parent, &back_edge)));
  if (!back_edge) return Status::Ok();

  // The back edge u -> v closes the cycle v -> ... -> u -> v along the DFS tree.
  const Vertex v = vertex_of[back_edge->after];
  std::vector<WaitEdge> cycle = {*back_edge};
  for (Vertex u = vertex_of[back_edge->before]; u != v; u = parent[u]) {
    cycle.push_back(*discovered_by[u]);
  }
  std::reverse(cycle.begin(), cycle.end());
  return Status::InvalidArgument(DescribeCycle(*this, cycle));
}

}  // namespace loom
