#include "scheduler/model_evaluation.h"

#include <ATen/Parallel.h>
#include <glog/logging.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "common/kv_client.h"
#include "model/best_weights.h"
#include "model/deeptte/checkpoint.h"
#include "model/evaluator.h"
#include "model/model_params.h"
#include "scheduler/job_mode.h"

namespace tteps::scheduler {
namespace {

class ModelEvaluation : public Evaluation {
 public:
  ModelEvaluation(zmq::context_t& ctx, deeptte::DeepTTE model,
                  std::shared_ptr<const data::Trips> trips, int64_t batch_size, double timeout_s,
                  std::string model_path, std::string model_last_path, bool keep_best)
      : ctx_(ctx),
        model_(std::move(model)),
        trips_(std::move(trips)),
        batch_size_(batch_size),
        timeout_s_(timeout_s),
        model_path_(std::move(model_path)),
        model_last_path_(std::move(model_last_path)),
        keep_best_(keep_best) {}

  ~ModelEvaluation() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  void Start(const ClusterMap& map) override {
    map_ = map;
    thread_ = std::thread([this] {
      // --threads, as set on the main thread, also where the OpenMP runtime keeps the count per
      // thread (a new thread would take OMP_NUM_THREADS or every core).
      at::init_num_threads();
      Loop();
    });
  }

  void Request(int64_t step, bool final, double train_s) override {
    Queue({step, final, train_s, {}});
  }

  void Offer(int64_t step, bool final, std::vector<float> params, double train_s) override {
    Queue({step, final, train_s, std::move(params)});
  }

  void LoseServer(int server) override { lost_servers_.Add(server); }

  void Remap(const ClusterMap& map) override {
    std::lock_guard<std::mutex> lock(mu_);
    next_map_ = map;
    ++remaps_;
    lost_servers_.Clear();  // ids of the old map; later losses are of the new one
  }

  std::optional<EvalOutcome> Poll() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (results_.empty()) return std::nullopt;
    auto r = results_.front();
    results_.pop_front();
    return r;
  }

 private:
  void Loop() {
    NodeInfo self;
    self.role = Role::kScheduler;
    self.host = HostName();
    // Without servers (ring modes) parameters only come with offered snapshots.
    std::unique_ptr<KVClient> kv;
    uint64_t remaps = 0;  // the cluster map kv was made for (a rollback makes a new one)
    const auto connect = [&] {
      kv.reset();
      if (map_.servers.empty()) return;
      KVClientOptions o;
      o.timeout_s = timeout_s_;
      o.abort = [this, &remaps] {
        std::lock_guard<std::mutex> lock(mu_);
        return stop_ || remaps_ != remaps;  // a pull of the old servers is abandoned
      };
      o.lost_servers = &lost_servers_;
      kv = std::make_unique<KVClient>(ctx_, map_, self, o);
    };
    connect();
    const ParamLayout layout = LayoutOf(*model_);
    std::vector<float> pulled(layout.total());
    while (true) {
      Job req;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stop_ || !requests_.empty(); });
        if (stop_) return;
        req = std::move(requests_.front());
        requests_.pop_front();
        busy_ = true;
        if (remaps_ != remaps) {
          map_ = next_map_;
          remaps = remaps_;
          connect();
        }
      }
      EvalOutcome out = EvaluateJob(req, kv.get(), layout, &pulled);
      std::lock_guard<std::mutex> lock(mu_);
      busy_ = false;
      if (!out.error.empty() && !out.final && remaps_ != remaps) {
        LOG(WARNING) << "the evaluation at step " << req.step
                     << " was abandoned: the job rolled back (" << out.error << ")";
        continue;
      }
      results_.push_back(out);
    }
  }

  struct Job {
    int64_t step = 0;
    bool final = false;
    double train_s = 0;
    std::vector<float> params;  // empty: pull from the servers
  };

  // One evaluation: of the job's weights pulled from the servers (into `pulled`), or of the
  // parameters the job offered; the final one writes model.pt and model_last.pt.
  EvalOutcome EvaluateJob(const Job& req, KVClient* kv, const ParamLayout& layout,
                          std::vector<float>* pulled) {
    EvalOutcome out;
    out.step = req.step;
    out.final = req.final;
    out.train_s = req.train_s;
    try {
      const std::vector<float>& params = req.params.empty() ? *pulled : req.params;
      if (!req.params.empty()) {
        out.version = req.step;
        CopyParamsIn(*model_, layout, req.params.data());
      } else {
        if (!kv)
          throw std::logic_error("an evaluation without parameters in a job without servers");
        // The final weights of a sync job are those of version `step`: with clipping, the
        // last step may still be waiting for its norm when the workers report done.
        const bool exact = req.final && JobMode(map_.config.exchange).lockstep();
        const int64_t want = exact ? req.step : 0;
        out.version = kv->Call(KVRequest::Pull(want, pulled->data())).version;
        CopyParamsIn(*model_, layout, pulled->data());
      }
      if (trips_->empty()) {
        out.json = "null";
      } else {
        const EvalResult r = Evaluate(*model_, *trips_, batch_size_);
        out.json = r.ToJson().str();
        out.mape = r.mape;
        out.best = keep_best_ && best_.Offer(req.step, r.mape, out.json, params);
      }
      if (out.final) {
        deeptte::SaveModel(model_, model_last_path_);
        if (best_.has()) CopyParamsIn(*model_, layout, best_.params().data());
        deeptte::SaveModel(model_, model_path_);
      }
    } catch (const std::exception& e) {
      out.error = e.what();
    }
    return out;
  }

  // An evaluation that is not final is dropped while another is running or queued, and
  // without evaluation trips (the final one still saves the model).
  void Queue(Job job) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!job.final && (trips_->empty() || busy_ || !requests_.empty())) return;
    requests_.push_back(std::move(job));
    cv_.notify_all();
  }

  zmq::context_t& ctx_;
  deeptte::DeepTTE model_;
  std::shared_ptr<const data::Trips> trips_;
  int64_t batch_size_;
  double timeout_s_;
  std::string model_path_, model_last_path_;
  bool keep_best_;
  BestWeights best_;  // touched by the evaluation thread only
  ClusterMap map_;
  std::thread thread_;
  std::mutex mu_;
  LostServers lost_servers_;
  ClusterMap next_map_;  // a rollback's map, taken before the next evaluation
  uint64_t remaps_ = 0;
  std::condition_variable cv_;
  std::deque<Job> requests_;
  std::deque<EvalOutcome> results_;
  bool busy_ = false, stop_ = false;
};

}  // namespace

std::unique_ptr<Evaluation> MakeModelEvaluation(zmq::context_t& ctx, deeptte::DeepTTE model,
                                                std::shared_ptr<const data::Trips> eval_trips,
                                                int64_t batch_size, double timeout_s,
                                                std::string model_path, std::string model_last_path,
                                                bool keep_best) {
  return std::make_unique<ModelEvaluation>(ctx, std::move(model), std::move(eval_trips), batch_size,
                                           timeout_s, std::move(model_path),
                                           std::move(model_last_path), keep_best);
}

}  // namespace tteps::scheduler
