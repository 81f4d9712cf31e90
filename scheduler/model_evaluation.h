// Evaluation backed by DeepTTE: pulls the weights from the servers into a model of its own
// and evaluates it on the eval split; the final evaluation also saves model_last.pt (the final
// weights) and model.pt (with `keep_best`, the weights of the best evaluation; else the final).
// Without evaluation trips it evaluates nothing (outcomes hold "null").
#pragma once

#include <vector>
#include <zmq.hpp>

#include "model/data/trips.h"
#include "model/deeptte/deeptte.h"
#include "scheduler/evaluation.h"

namespace tteps::scheduler {

std::unique_ptr<Evaluation> MakeModelEvaluation(zmq::context_t& ctx, deeptte::DeepTTE model,
                                                std::shared_ptr<const data::Trips> eval_trips,
                                                int64_t batch_size, double timeout_s,
                                                std::string model_path, std::string model_last_path,
                                                bool keep_best);

}  // namespace tteps::scheduler
