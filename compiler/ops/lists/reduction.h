/* Ops: reductions, normalisations, softmax variants, TopK, CumSum (see op_list.h). */
