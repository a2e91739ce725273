// The control: the standard containers travel as objects without a Boost include of the user's.
#include <array>
#include <deque>
#include <list>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <valarray>
#include <vector>

#include "mpidist/mpidist.hpp"

void containers() {
  std::vector<std::string> names{"a"};
  names = mpidist::broadcast(names, 0);
  const auto sets = mpidist::all_gather(std::set<int>{1, 2});
  const auto maps = mpidist::gather(std::map<std::string, int>{{"tokens", 3}}, 0);
  const auto lists = mpidist::all_gather(std::list<std::pair<int, std::string>>{});
  const auto queues = mpidist::all_to_all(std::vector<std::deque<double>>(2));
  const auto index = mpidist::broadcast(std::unordered_map<std::string, std::vector<int>>{}, 0);
  const auto seen = mpidist::all_reduce(std::unordered_set<int>{1}, [](auto a, const auto& b) {
    a.insert(b.begin(), b.end());
    return a;
  });
  mpidist::send(names, 1);
  (void)mpidist::recv<std::vector<std::string>>(1);
  const auto labels = mpidist::broadcast(std::array<std::string, 2>{"cat", "dog"}, 0);
  const auto fields = mpidist::all_gather(std::valarray<double>(1.0, 4));
  (void)sets, (void)maps, (void)lists, (void)queues, (void)index, (void)seen, (void)labels, (void)fields;
}
